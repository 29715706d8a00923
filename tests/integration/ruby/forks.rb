# forks.rb: a preforking server in miniature (Puma, Unicorn): the master forks two workers, which do
# the work, and waits for them. rbscope record --subprocesses must sample the workers too.
$stdout.sync = true

class Worker
  def work
    loop { 500.times.map { |i| i.to_s }.join }
  end
end

# (ready once both workers have their names: each says so on a pipe; on a busy machine a fork can take a while)
r, w = IO.pipe
pids = Array.new(2) do
  fork do
    r.close
    $0 = "forks.rb worker"
    w.write("x")
    w.close
    Worker.new.work
  end
end
w.close
at_exit { pids.each { |pid| Process.kill(:TERM, pid) rescue nil } }
r.read(2)
puts "ready"
Process.waitall
