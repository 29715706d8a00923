# route.rb: one thread serving a Sinatra route forever, its work deep under Rack's and Sinatra's frames, for
# bench/run labels (the request label is found at every sample). Prints "ready" once it runs.
require "sinatra/base"
require "rack"

class BenchApp < Sinatra::Base
  set :environment, :production
  get "/orders/:id" do
    x = 0
    200_000.times { |i| x += i % 7 }
    x.to_s
  end
end

trap("TERM") { exit!(0) } # (bench/run stops it so; something loaded here traps TERM without exiting)
$stdout.sync = true
puts "ready"
env = Rack::MockRequest.env_for("/orders/1")
loop { BenchApp.call(env.dup) }
