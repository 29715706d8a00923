# rails.rb: a Rails app of three actions of different CPU cost for tests/integration/labels.sh (Debian's rails, no
# generator, no files of its own beyond this one), served by Puma in cluster mode (rails.ru) with RouteCpu
# (route_cpu.rb) outermost: each action's CPU time, the reference its endpoint labels are checked against.
ENV["RAILS_ENV"] ||= "production" # (development mode adds routes and reloads)
require "action_controller/railtie"
require_relative "busy"
require_relative "route_cpu"

class RailsShop < Rails::Application
  config.root = __dir__
  config.eager_load = true
  config.cache_classes = true
  config.secret_key_base = "rbscope-labels-test-" * 4
  config.logger = Logger.new(nil)
  config.log_level = :fatal
  config.hosts.clear
end

class OrdersController < ActionController::Base
  def index
    render plain: Busy.run(20_000).to_s
  end

  def show
    render plain: Busy.run(40_000 + params[:id].to_i % 2).to_s
  end
end

module Admin
  class ReportsController < ActionController::Base
    def heavy
      render plain: Busy.run(80_000).to_s
    end
  end
end

RailsShop.initialize!
RailsShop.routes.draw do
  get "/orders" => "orders#index"
  get "/orders/:id" => "orders#show"
  namespace :admin do
    get "/reports/heavy" => "reports#heavy"
  end
end
