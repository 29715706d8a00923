# churn.rb: defines, runs and drops a new method every few milliseconds, with a GC now and then, so the
# memory of old instruction sequences is reused for new ones. A sampler that caches iseqs by address
# must notice: a frame of churn_N must never be named after an older churn_M.
$stdout.sync = true
puts "ready"
i = 0
loop do
  i += 1
  eval("def churn_#{i}; x = 0; 3000.times { x += 1 }; x; end; churn_#{i}", binding, "churn_#{i}.rb", 1)
  Object.send(:remove_method, :"churn_#{i}")
  GC.start if (i % 50).zero?
end
