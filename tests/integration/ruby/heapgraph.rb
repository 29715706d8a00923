# heapgraph.rb: write a heap dump with known structures, for `heap path`, `retained` and `strings`:
# a constant holding a Hash holding an Array holding a Planted object (the path to it is exactly that);
# a holder object that alone keeps 300 Strings of 1000 bytes (its retained size); 777 Strings of one
# value and 50 of another, 3000 bytes long (the duplicates). Prints the planted object's and the holder's
# addresses. Usage: ruby heapgraph.rb OUT
require "objspace"
ObjectSpace.trace_object_allocations_start
class Planted; end
module PathHolder
  TABLE = {}                  # PATH_HASH
  TABLE[:list] = []           # PATH_ARRAY
  TABLE[:list] << Planted.new # PATH_OBJECT
end
class RetainHolder
  def initialize(n)
    @strings = Array.new(n) { |i| format("%04d", i) * 250 } # RETAINED
  end
end
$holder = RetainHolder.new(300)
$dups = Array.new(777) { "rbscope-dup-#{777}" } # DUPLICATES
$long = Array.new(50) { "L" * 3000 }           # LONG_DUPLICATES
def address(obj); ObjectSpace.dump(obj)[/"address":"(0x\h+)"/, 1]; end
# Not PathHolder::TABLE here: from 3.4 an inline constant cache on this line would hold the Hash, one step
# nearer a root than the module's constant table.
puts "planted #{address(ObjectSpace.each_object(Planted).first)}"
puts "holder #{address($holder)}"
GC.start
File.open(ARGV[0], "w") { |f| ObjectSpace.dump_all(output: f) }
