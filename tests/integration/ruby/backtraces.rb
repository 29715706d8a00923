# backtraces.rb: threads parked at known places; their own Thread#backtrace_locations, written as JSON to
# /tmp/rbscope-backtraces-PID.json, are what `rbscope snapshot` must agree with frame by frame
# (tests/integration/cores.sh).
begin
  require "json"
rescue LoadError
  # A Ruby without extensions (the static miniruby of the tests): names and paths here are plain ASCII.
  module JSON
    def self.generate(o)
      case o
      when Hash then "{" + o.map { |k, v| "#{generate(k)}:#{generate(v)}" }.join(",") + "}"
      when Array then "[" + o.map { |v| generate(v) }.join(",") + "]"
      when String then "\"" + o.gsub(/["\\]/) { |c| "\\" + c } + "\""
      when nil then "null"
      else o.to_s
      end
    end
  end
end

def nap
  sleep
end

def deep(n, q)
  return q.pop if n == 0
  deep(n - 1, q)
end

class Dyn
  define_method(:dynamic) { sleep }

  def method_missing(name, *args)
    return super unless name == :ghost
    sleep
  end

  def respond_to_missing?(name, priv = false)
    name == :ghost || super
  end
end

module Loud
  def work
    super
  end
end

class Worker
  prepend Loud

  def work
    sleep
  end
end

module Shout
  refine String do
    def shout
      sleep
    end
  end
end

using Shout

class Evaluator
  def run
    eval("sleep", binding, "evaluated.rb", 7)
  end

  def in_block
    [1].each { eval("sleep") }
  end

  def nested
    eval("eval('sleep')")
  end
end

class Careful
  def rescuing
    raise "no"
  rescue
    sleep
  end

  def ensuring
    nil
  ensure
    sleep
  end
end

q = Queue.new
threads = []
threads << Thread.new { Thread.current.name = "sleeper"; nap }
threads << Thread.new { Thread.current.name = "deep"; deep(20, q) }
threads << Thread.new { Thread.current.name = "dynamic"; Dyn.new.dynamic }
threads << Thread.new { Thread.current.name = "ghost"; Dyn.new.ghost }
threads << Thread.new { Thread.current.name = "prepended"; Worker.new.work }
threads << Thread.new { Thread.current.name = "refined"; "x".shout }
threads << Thread.new { Thread.current.name = "evaluated"; Evaluator.new.run }
threads << Thread.new { Thread.current.name = "evaluated-in-block"; Evaluator.new.in_block }
threads << Thread.new { Thread.current.name = "evaluated-twice"; Evaluator.new.nested }
threads << Thread.new { Thread.current.name = "rescuing"; Careful.new.rescuing }
threads << Thread.new { Thread.current.name = "ensuring"; Careful.new.ensuring }
threads << Thread.new { Thread.current.name = "blocks"; [1].each { [2].each { sleep } } }
threads << Thread.new { Thread.current.name = "fiber"; Fiber.new { [3].map { sleep } }.resume }
r, _w = IO.pipe
threads << Thread.new { Thread.current.name = "reader"; r.read }

# Wait until every thread is parked (sleeping or blocked), then let them describe themselves.
sleep 0.05 until threads.all? { |t| t.status == "sleep" }
sleep 0.2
out = threads.map do |t|
  { "name" => t.name,
    "frames" => t.backtrace_locations.map { |l| [l.label, l.path, l.lineno] } }
end
File.write("/tmp/rbscope-backtraces-#{Process.pid}.json", JSON.generate(out))
puts "ready"
$stdout.flush
sleep
