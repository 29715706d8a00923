# jit-later.rb: busy in a method, with YJIT built in but off until SIGUSR1 turns it on (RubyVM::YJIT.enable, as
# Rails 7.2 does once booted).
$stdout.sync = true

def step(i)
  i + 1
end

def work(n)
  i = 0
  i = step(i) while i < n
  i
end

enable = false
trap("USR1") { enable = true }
puts "ready"
loop do
  work(100_000)
  next unless enable

  enable = false
  RubyVM::YJIT.enable
  puts "enabled"
end
