# config.ru: the Rack entry of tests/integration/apps/app.rb. RBSCOPE_TEST_ALLOCATIONS=1 records allocation sites
# (ObjectSpace.trace_object_allocations_start) for the heap dumps of tests/integration/agent.sh.
if ENV["RBSCOPE_TEST_ALLOCATIONS"] == "1"
  require "objspace"
  ObjectSpace.trace_object_allocations_start
end
require_relative "app"
run ShopApp
