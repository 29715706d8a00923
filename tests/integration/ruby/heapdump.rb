# heapdump.rb: write a heap dump with known contents: 1234 Planted objects allocated at one line and
# 567 distinct strings at another, with allocation tracing on; classes a dump does not name (a named class's
# singleton class, objects' singleton classes, anonymous classes). Usage: ruby heapdump.rb OUT
require "objspace"
ObjectSpace.trace_object_allocations_start
class Planted
  def initialize(i); @i = i; end
end
$planted = Array.new(1234) { |i| Planted.new(i) } # PLANTED
$strings = Array.new(567) { |i| "leak-#{i}" }     # STRINGS
def Planted.make(i); new(i); end
$singles = Array.new(3) { o = Object.new; def o.hello; end; o }
$anonymous = Array.new(4) { Class.new.new }
GC.start
File.open(ARGV[0], "w") { |f| ObjectSpace.dump_all(output: f) }
