# busy.rb: the CPU work of the labels tests' routes and actions (routes.rb, rails.rb): n turns of a loop.
module Busy
  def self.run(n)
    x = 0
    i = 0
    while i < n
      x += i % 7
      i += 1
    end
    x
  end
end
