# agent-target.rb: a program for the agent tests: threads, a Ruby class to trace, C calls, allocation, the app's own signal handlers.
# usage: ruby -rrbscope agent-target.rb [busy|sleep|read|queue|forker|forklater]
$stdout.sync = true
class Shop
  def initialize
    @items = {}
  end

  def add(name, price)
    @items[name] = price
  end

  def total
    @items.values.sum { |v| v.to_s.size }
  end

  def slow
    sleep 0.03
    :done
  end
end

# The app's own handlers for signals tracers like to use: they must keep working.
$urg = 0
$prof = 0
Signal.trap("URG") { $urg += 1 }
Signal.trap("PROF") { $prof += 1 }

def work(shop, h, keys, i)
  shop.add(i % 10, "item #{i}")
  h.key?(keys.sample)
  shop.total
  shop.slow if (i % 3000).zero?
end

mode = ARGV[0] || "busy"
puts "threads #{Thread.list.size}" # loading the agent starts no Ruby thread
Thread.new do
  Thread.current.name = "ticker"
  shop = Shop.new
  loop do
    shop.add(:t, 1)
    sleep 0.01
  end
end
if mode == "forker"
  child = fork do
    shop = Shop.new
    i = 0
    loop do
      work(shop, { a: 1 }, %i[a b], i += 1)
      sleep 0.001 if (i % 100).zero?
    end
  end
  puts "child #{child}"
end
puts "ready #{Process.pid}"
case mode
when "busy", "forker"
  shop = Shop.new
  h = { a: 1 }
  keys = %i[a b]
  i = 0
  loop { work(shop, h, keys, i += 1) }
when "forklater"
  # Forks when sent SIGUSR1 (while a test traces it); then parent and child call Shop#add with names of their own.
  $fork_now = false
  $child_calls = 0
  Signal.trap("USR1") { $fork_now = true }
  shop = Shop.new
  h = { a: 1 }
  keys = %i[a b]
  i = 0
  forked = nil
  loop do
    work(shop, h, keys, i += 1)
    if $fork_now && !forked
      forked = fork do
        loop do
          shop.add(:in_child, $child_calls += 1)
          sleep 0.001 if ($child_calls % 100).zero?
        end
      end
      puts "child #{forked}"
    end
    shop.add(:after_fork, i) if forked
  end
when "sleep" then sleep
when "read" then IO.pipe[0].read
when "queue" then Queue.new.pop
end
