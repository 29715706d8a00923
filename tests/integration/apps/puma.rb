# puma.rb: Puma in cluster mode, as production runs it: two forked workers of four threads, on loopback only.
workers 2
threads 2, 4
bind "tcp://127.0.0.1:#{ENV.fetch('RBSCOPE_TEST_PORT', '9292')}"
