# routes.rb: a Sinatra app of three routes of different CPU cost for tests/integration/labels.sh, served by Puma in
# cluster mode (routes.ru), RouteCpu (route_cpu.rb) outermost: the reference its endpoint labels are checked against.
require "sinatra/base"
require_relative "route_cpu"

class RoutesApp < Sinatra::Base
  set :environment, :production

  def self.busy(n)
    x = 0
    i = 0
    while i < n
      x += i % 7
      i += 1
    end
    x
  end

  get("/light") { RoutesApp.busy(20_000).to_s }
  get("/medium/:id") { RoutesApp.busy(40_000 + params[:id].to_i % 2).to_s }
  get("/heavy") { RoutesApp.busy(80_000).to_s }
end
