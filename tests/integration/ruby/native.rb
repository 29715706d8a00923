# native.rb: threads whose time is in native code, for --native: "main" in a C method of the test extension
# (ARGV[0]: the directory it was built in), "zlib" compressing incompressible data (libz, without the GVL),
# "reader" blocked reading a pipe (libc), and with ARGV[1] == "nokogiri", "xml" parsing a large document
# (libxml2), and "churn" starting short threads that exit (some while they are unwound). Every result is
# checked: a wrong one aborts the process ("bad ..."). Prints "ready" once every thread is in place.
$stdout.sync = true
$LOAD_PATH.unshift(ARGV[0])
require "rbscope_native_test"
require "zlib"

data = Random.new(1).bytes(1 << 20)
r, _w = IO.pipe
threads = []
threads << Thread.new do
  Thread.current.name = "zlib"
  loop { abort "bad deflate" unless Zlib::Inflate.inflate(Zlib::Deflate.deflate(data)) == data }
end
threads << Thread.new { Thread.current.name = "reader"; r.read }
if ARGV[1] == "nokogiri"
  require "nokogiri"
  doc = "<root>" + (1..5_000).map { |i| "<item id=\"#{i}\"><name>n#{i}</name><v>#{i * 3}</v></item>" }.join + "</root>"
  threads << Thread.new { Thread.current.name = "xml"; loop { Nokogiri::XML(doc); sleep 0.005 } } # the GVL let go
end
threads << Thread.new { Thread.current.name = "churn"; loop { Thread.new { 2000.times { |i| i * i } }.join; sleep 0.01 } }
sleep 0.1 until threads.all? { |t| t.name } && threads[1].status == "sleep"
puts "ready"
expected = RbscopeNativeTest.hot(8_000_000)
loop do
  abort "bad checksum" unless RbscopeNativeTest.hot(8_000_000) == expected
  sleep 0.005 # lets the GVL go: Ruby 3.4 would otherwise leave the zlib thread waiting for it
end
