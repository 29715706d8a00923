# puma.rb: Puma in cluster mode, as production runs it: two forked workers of four threads, on loopback only.
workers 2
threads 2, 4
# Puma's fairness rule (after 10 requests on one connection, poll the listener when every thread is busy, and hand
# the connection back to the reactor) runs or not by how wrk's 8 connections happen to fall on the two workers: its
# IO#wait_readable read 1.1% of one recording's request samples and 0 of the next. The JIT checks compare two
# recordings function by function, so each connection is served inline for as long as it lasts.
max_fast_inline Float::INFINITY
bind "tcp://127.0.0.1:#{ENV.fetch('RBSCOPE_TEST_PORT', '9292')}"
