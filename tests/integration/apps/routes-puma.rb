# routes-puma.rb: Puma in cluster mode for routes.ru: two forked workers of one thread each (a request's CPU time is
# its thread's alone), on loopback only.
workers 2
threads 1, 1
bind "tcp://127.0.0.1:#{ENV.fetch('RBSCOPE_TEST_PORT', '9292')}"
