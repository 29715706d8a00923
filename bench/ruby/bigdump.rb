# bigdump.rb: write a large heap dump for the heap bench: an app-like mix of strings, arrays, hashes and
# objects, allocated with tracing on. Usage: ruby bigdump.rb OUT [OBJECTS]
require "objspace"
ObjectSpace.trace_object_allocations_start
class Record
  def initialize(i)
    @id = i
    @name = "record-#{i}"
    @tags = ["t#{i % 7}", "u#{i % 11}"]
    @meta = { created: i, note: "n" * (i % 50) }
  end
end
n = (ARGV[1] || 300_000).to_i
$keep = Array.new(n) { |i| Record.new(i) }
GC.start
File.open(ARGV[0], "w") { |f| ObjectSpace.dump_all(output: f) }
