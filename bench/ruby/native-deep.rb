# native-deep.rb: for the cost of --native: a thread 50 Ruby frames deep in a C method 20 native frames deep
# ("busy": running, so each sample stops it), or 50 frames deep blocked reading a pipe ("blocked": never stopped).
# ARGV[1]: the directory the test extension (tests/integration/ruby/native_ext) was built in.
$stdout.sync = true
$LOAD_PATH.unshift(ARGV[1])
require "rbscope_native_test"
R, W = IO.pipe
def down(n, busy)
  return (busy ? loop { RbscopeNativeTest.deep(20, 1_000_000) } : R.read) if n <= 0
  down(n - 1, busy)
end
puts "ready"
down(47, ARGV[0] == "busy")
