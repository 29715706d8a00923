# forks.rb: a preforking server in miniature (Puma, Unicorn): the master forks two workers, which do
# the work, and waits for them. rbscope record --subprocesses must sample the workers too.
$stdout.sync = true

class Worker
  def work
    loop { 500.times.map { |i| i.to_s }.join }
  end
end

pids = Array.new(2) do
  fork do
    $0 = "forks.rb worker"
    Worker.new.work
  end
end
at_exit { pids.each { |pid| Process.kill(:TERM, pid) rescue nil } }
sleep 0.3
puts "ready"
Process.waitall
