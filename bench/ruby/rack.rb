# rack.rb: one thread serving a plain Rack app forever (no framework names its route: the request label comes from
# the env of its call(env), a few reads a sample), for bench/run labels. Prints "ready" once it runs.
require "rack"

class BenchRack
  def call(env)
    Thread.current[:request_id] = env["PATH_INFO"] # (a fiber-local, for --label's cost)
    x = 0
    200_000.times { |i| x += i % 7 }
    [200, {}, [x.to_s]]
  end
end

trap("TERM") { exit!(0) }
$stdout.sync = true
app = Rack::Lint.new(BenchRack.new)
puts "ready"
loop { app.call(Rack::MockRequest.env_for("/orders/42/items")) }
