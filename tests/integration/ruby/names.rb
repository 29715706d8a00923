# names.rb: tiny methods called in turn at the same stack depth, so a sampler reading from outside keeps
# meeting one method's frame beside another's env. Every frame must still get its own, qualified name.
$stdout.sync = true
module Outer
  30.times { |i| instance_variable_set("@v#{i}", i) } # a module with a large ivar table
  def self.spin
    loop do
      Gem::Requirement.parse(">= 1")
      Gem.suffix_pattern
      Outer.helper
      Outer.matcher
    end
  end

  # A method that has used $~ keeps its method entry inside an svar, not in its frame.
  def self.matcher
    "abc 123" =~ /\d+/
    3.times { $~[0] }
  end

  def self.helper
    20.times {}
  end
end
puts "ready"
Outer.spin
