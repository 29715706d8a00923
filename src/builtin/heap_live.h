/* heap_live.h: `rbscope heap live -p PID`. */
#ifndef RBSCOPE_HEAP_LIVE_H
#define RBSCOPE_HEAP_LIVE_H

int cmd_heap_live(int argc, char **argv);

#endif
