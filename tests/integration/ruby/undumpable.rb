# A process that made itself undumpable (prctl PR_SET_DUMPABLE 0, as some hardened daemons do): only
# root or CAP_SYS_PTRACE may read it, even as its own user. Prints "ready" once it is.
require "fiddle"
prctl = Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"], [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4,
                             Fiddle::TYPE_INT)
PR_SET_DUMPABLE = 4
abort "prctl(PR_SET_DUMPABLE, 0) failed" unless prctl.call(PR_SET_DUMPABLE, 0, 0, 0, 0).zero?
$stdout.sync = true
puts "ready"
sleep
