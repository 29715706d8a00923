# routes.rb: a Sinatra app of three routes of different CPU cost for tests/integration/labels.sh, served by Puma in
# cluster mode (routes.ru), RouteCpu (route_cpu.rb) outermost: the reference its endpoint labels are checked against.
require "sinatra/base"
require_relative "busy"
require_relative "route_cpu"

class RoutesApp < Sinatra::Base
  set :environment, :production

  get("/light") { Busy.run(20_000).to_s }
  get("/medium/:id") { Busy.run(40_000 + params[:id].to_i % 2).to_s }
  get("/heavy") { Busy.run(80_000).to_s }
end
