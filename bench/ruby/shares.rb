# shares.rb: CPU time split in known shares between three methods; prints each one's measured share at exit.
# Usage: ruby shares.rb SECS. The shares are measured in-process with the thread CPU clock, so the bench can
# compare what rbscope sampled with what really happened.
$stdout.sync = true
class Shares
  def alpha = spin(0.006)
  def beta = spin(0.003)
  def gamma = spin(0.001)

  private

  def spin(secs)
    t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    x = 0
    x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t < secs
    x
  end
end
s = Shares.new
spent = Hash.new(0.0)
puts "ready"
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + (ARGV[0] || 10).to_f
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  %i[alpha beta gamma].each do |m|
    t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    s.public_send(m)
    spent[m] += Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t
  end
end
total = spent.values.sum
spent.each { |m, v| puts format("Shares#%s %.2f", m, 100 * v / total) }
