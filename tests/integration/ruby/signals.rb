# signals.rb: counts the SIGUSR1s it gets and prints the count on SIGUSR2, while it keeps busy.
# record --blocking stops and continues its threads with ptrace: no signal may be lost on the way.
$stdout.sync = true
count = 0
trap("USR1") { count += 1 }
trap("USR2") { puts "usr1 #{count}" }
puts "ready"
loop { 100.times.map { |i| i * i }.sum }
