# bigheap.rb N: a heap of N plain objects kept alive (N x 40 bytes of slots), beside a thread that counts loop
# iterations: its count is printed with the time every 0.1 s ("tick SECONDS COUNT"), so a reader of the heap
# from outside can be measured by what it costs that thread. SIGUSR1 prints how long the process's own
# ObjectSpace.count_objects takes on this heap ("count_objects SECONDS"): the in-process way, the VM stopped.
n = Integer(ARGV[0])
keep = Array.new(n) { Object.new }
count = 0
Thread.new { loop { count += 1 } }
trap("USR1") do
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  ObjectSpace.count_objects
  puts "count_objects #{Process.clock_gettime(Process::CLOCK_MONOTONIC) - t}"
  STDOUT.flush
end
puts "ready #{keep.size}"
STDOUT.flush
loop do
  sleep 0.1
  puts "tick #{Process.clock_gettime(Process::CLOCK_MONOTONIC)} #{count}"
  STDOUT.flush
end
