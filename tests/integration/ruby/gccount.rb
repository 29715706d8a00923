# gccount.rb: a process that has collected garbage a known number of times, then allocates nothing more:
# prints GC.count, GC.stat(:major_gc_count) and GC.stat(:time) (ms; nil before Ruby 3.1) on its "ready" line.
$stdout.sync = true
5.times { GC.start }
10.times { GC.start(full_mark: false) }
t = GC.stat[:time]
puts "ready #{GC.count} #{GC.stat(:major_gc_count)} #{t.nil? ? '-' : t}"
sleep
