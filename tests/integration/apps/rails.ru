# rails.ru: the Rack entry of tests/integration/apps/rails.rb, the CPU accounting outermost.
require_relative "rails"
use RouteCpu, RouteCpu::RAILS
run RailsShop
