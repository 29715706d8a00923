# extconf.rb: the C extension the --native tests build for each Ruby (rbscope_native_test.so).
require "mkmf"
$CFLAGS << " -O2 -g -fno-inline-functions-called-once"
create_makefile("rbscope_native_test")
