# gccount.rb: a process that has collected garbage a known number of times, then allocates nothing more:
# prints GC.count, GC.stat(:major_gc_count) and GC.stat(:time) (ms; nil before Ruby 3.1) on its "ready" line,
# and on SIGUSR1 the heap's live and free slots as GC.stat gave them last, before it went to sleep.
$stdout.sync = true
5.times { GC.start }
10.times { GC.start(full_mark: false) }
t = GC.stat[:time]
stat = {}
trap("USR1") { puts "slots #{stat[:heap_live_slots]} #{stat[:heap_free_slots]}" }
puts "ready #{GC.count} #{GC.stat(:major_gc_count)} #{t.nil? ? '-' : t}"
GC.stat(stat) # fills the hash: only its values change in the second call
GC.stat(stat)
loop { sleep }
