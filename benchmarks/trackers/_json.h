/* The few JSON reads the benchmark's compiled trackers need: the integer after a key inside an object. Not a JSON
   parser: enough for the lines Claude Code writes, which is all these trackers are fed. */
#include <stdlib.h>
#include <string.h>

/* The end of the JSON value starting at p (an object, an array, a string or a scalar). */
static const char *value_end(const char *p) {
    int depth = 0, in_string = 0;
    for (; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_string = 0;
            continue;
        }
        if (*p == '"') in_string = 1;
        else if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') { if (--depth <= 0) return p + 1; }
        else if (depth == 0 && (*p == ',' || *p == '\n')) return p;
    }
    return p;
}

/* Where the value of "key" starts inside [from, to), or NULL. */
static const char *find_value(const char *from, const char *to, const char *key) {
    size_t n = strlen(key);
    for (const char *p = from; p && p < to; p++) {
        p = strstr(p, key);
        if (!p || p >= to) return NULL;
        if (p[-1] == '"' && p[n] == '"') {
            const char *q = p + n + 1;
            while (*q == ' ' || *q == ':') q++;
            return q;
        }
    }
    return NULL;
}

/* The non-negative integer value of "key" inside [from, to), else 0. */
static long long count(const char *from, const char *to, const char *key) {
    const char *v = find_value(from, to, key);
    return v && *v >= '0' && *v <= '9' ? atoll(v) : 0;
}

/* input + cache creation + cache read of the usage object at u (to its end). */
static long long prompt_of(const char *u) {
    const char *end = value_end(u);
    return count(u, end, "input_tokens") + count(u, end, "cache_creation_input_tokens")
        + count(u, end, "cache_read_input_tokens");
}
