# routes.ru: the Rack entry of tests/integration/apps/routes.rb, the CPU accounting outermost.
require_relative "routes"
use RouteCpu
run RoutesApp
