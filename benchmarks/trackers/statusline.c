/* A compiled statusline command for bench_doors: the payload's context_window.current_usage prompt (input + cache
   creation + cache read), or nothing where current_usage is null. Reads the statusline payload on stdin. */
#include <stdio.h>
#include "_json.h"

int main(void) {
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    const char *window = find_value(buf, buf + n, "context_window");
    const char *usage = window ? find_value(window, value_end(window), "current_usage") : NULL;
    if (usage && *usage == '{') printf("%lld\n", prompt_of(usage));
    else puts("");
    return 0;
}
