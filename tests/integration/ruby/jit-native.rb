# jit-native.rb: a method YJIT compiles (pack) calling a C method that runs libz (Zlib::Deflate.deflate of 1 MB of
# noise), in a loop on the main thread: from JIT code straight into the C method, no interpreter between.
$stdout.sync = true
require "zlib"

NOISE = Random.new(1).bytes(1 << 20)

def pack(data)
  Zlib::Deflate.deflate(data)
end

20.times { pack(NOISE) }
puts "ready"
loop { pack(NOISE) }
