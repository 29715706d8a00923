# census.rb: a heap that stands still, for `rbscope heap summary -p` (tests/integration/heap.sh). It makes objects
# of its own classes, collects, turns the GC off, counts its objects by type (ObjectSpace.count_objects into a hash
# made before: no object made from then on) and those of some classes (instances whose class is exactly it), says
# "ready" with a frozen string (IO#syswrite makes no object of it), and sleeps. On SIGUSR1 it prints the counts:
# the census read before must equal them.
class CensusWidget
  def initialize(i)
    @i = i
  end
end
CensusPoint = Struct.new(:x, :y)
keep = []
20_000.times { |i| keep << CensusWidget.new(i) << "s#{i}" << [i] << { i => i } }
3_000.times { |i| keep << CensusPoint.new(i, i) << i.to_f / 3 }
counts = {}
classes = [CensusWidget, CensusPoint, String, Array, Hash, Float]
own = {}
# (each call below made once before the count too: a call site's first call makes its call cache, an object)
def say(s)
  STDOUT.syswrite(s)
end

def nap(t)
  sleep(t)
end
say("".freeze)
nap(0.001)
printed = "ready\n".freeze
ObjectSpace.count_objects(counts) # (the first call makes the symbols it names the types with)
trap("USR1") do
  counts.each { |k, v| puts "type #{k} #{v}" }
  own.each { |k, v| puts "class #{k} #{v}" }
  exit
end
GC.start
GC.disable
# (each_object with a block: no Enumerator, no object made between the counts; the objects with a singleton class,
# $LOAD_PATH since 2.7, are that class's, not their class's, as a dump's "class" says)
special = [$LOAD_PATH, $LOADED_FEATURES, ARGV, ENV].reject { |x| x.singleton_methods.empty? }
classes.each do |k|
  n = 0
  ObjectSpace.each_object(k) { |o| n += 1 if o.class == k && special.none? { |x| x.equal?(o) } }
  own[k] = n
end
ObjectSpace.count_objects(counts)
say(printed)
nap(1_000_000)
