# leak.rb: three heap dumps around a planted leak. Between dumps 1 and 2 it keeps 200 strings (the leak,
# at the line marked LEAK) and drops 300 others (transient, at TRANSIENT); between 2 and 3 it drops 300
# more. `heap diff d1 d2 d3` must report exactly the 200, at the LEAK line, and nothing transient; and 50
# objects of an anonymous class at ANONYMOUS, their class named as Ruby inspects it.
# Usage: ruby leak.rb DIR
require "objspace"
ObjectSpace.trace_object_allocations_start
$leak = []
def dump(path)
  GC.start
  File.open(path, "w") { |f| ObjectSpace.dump_all(output: f) }
end
def churn; 300.times.map { |i| "transient #{i}" }.size; end # TRANSIENT
dir = ARGV[0]
dump("#{dir}/d1.json")
churn
200.times { |i| $leak << "leak #{i}" } # LEAK
anonymous = Class.new
50.times { $leak << anonymous.new } # ANONYMOUS
churn
dump("#{dir}/d2.json")
churn
dump("#{dir}/d3.json")
