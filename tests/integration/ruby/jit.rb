# jit.rb: work a JIT compiles, that keeps its own account. Four kinds of call, in turn on the main thread: a hot
# tiny leaf method (tiny -> leaf), a loop spread over three lines (spread), blocks under Integer#times and
# Array#each (blocky), a chain of calls four deep (chain -> link1 -> link2 -> link3). The time (CLOCK_MONOTONIC: a
# wall profile's; the thread CPU clock is a system call that would weigh in)
# around each call is added up per kind; SIGUSR1 has it print "times TINY SPREAD BLOCKY CHAIN" (ns, since the
# start) at the next turn. "ready" after a warm-up long enough for the JIT to compile every method (some hundred
# calls of each; YJIT compiles a method at its 10th call on 3.1, its 30th on 3.3).
$stdout.sync = true

def leaf(x)
  x + 1
end

def tiny(n)
  i = 0
  i = leaf(i) while i < n
  i
end

def spread(n)
  i = 0
  a = 0
  while i < n
    a += i
    a ^= 3
    i += 1
  end
  a
end

def blocky(n)
  s = 0
  n.times { |k| s += k }
  ITEMS.each { |v| s ^= v }
  s
end

def link3(n)
  a = 0
  n.times { |k| a += k }
  a
end

def link2(n)
  link3(n) # (link2's call)
end

def link1(n)
  link2(n) # (link1's call)
end

def chain(n)
  link1(n) # (chain's call)
end

ITEMS = (1..200).to_a

KINDS = %i[tiny spread blocky chain].freeze
own = Hash.new(0)
report = false
trap("USR1") { report = true }
clock = Process::CLOCK_MONOTONIC
n = { tiny: 200_000, spread: 150_000, blocky: 40_000, chain: 50_000 }
warm_until = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1.5
ready = false
loop do
  KINDS.each do |k|
    t0 = Process.clock_gettime(clock)
    case k
    when :tiny then tiny(n[:tiny])
    when :spread then spread(n[:spread])
    when :blocky then blocky(n[:blocky])
    when :chain then chain(n[:chain])
    end
    own[k] += Process.clock_gettime(clock) - t0
  end
  if report
    report = false
    puts "times #{KINDS.map { |k| (own[k] * 1e9).round }.join(" ")}"
  end
  next if ready || Process.clock_gettime(Process::CLOCK_MONOTONIC) < warm_until

  ready = true
  puts "ready"
end
