/* A compiled stream tracker for bench_doors: the last main-chain assistant message's prompt (input + cache creation +
   cache read); one stream-json line in, one answer line out (null until the first). */
#include <stdio.h>
#include "_json.h"

int main(void) {
    static char line[1 << 22];
    long long estimate = -1;
    while (fgets(line, sizeof line, stdin)) {
        const char *end = line + strlen(line);
        const char *type = find_value(line, end, "type");
        const char *parent = find_value(line, end, "parent_tool_use_id");
        if (type && !strncmp(type, "\"assistant\"", 11) && (!parent || !strncmp(parent, "null", 4))) {
            const char *message = find_value(line, end, "message");
            const char *usage = message ? find_value(message, value_end(message), "usage") : NULL;
            if (usage && *usage == '{') estimate = prompt_of(usage);
        }
        if (estimate < 0) puts("null"); else printf("%lld\n", estimate);
        fflush(stdout);
    }
    return 0;
}
