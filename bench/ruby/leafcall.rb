# leafcall.rb: a C method (Array#index) calling a short Ruby method (Item#==) a million times a second, and that
# one a C method (Kernel#is_a?): the shape of call whose self time a sampler that retries torn reads leaks to callers.
class Item
  def initialize(v)
    @v = v
  end

  attr_reader :v

  def ==(other)
    other.is_a?(Item) && @v == other.v
  end
end
ARR = Array.new(2000) { |i| Item.new(i) }
T = Item.new(1999)
def search = ARR.index(T)
$stdout.sync = true
puts "ready"
loop { search }
