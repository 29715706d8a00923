# app.rb: a small Sinatra app served by Debian's puma in cluster mode for tests/integration/apps.sh: a JSON route
# (work in Ruby, allocations, a C extension), a slow one, and an order route that leaks each order's JSON when
# RBSCOPE_TEST_LEAK is set (tests/integration/allocs.sh: `heap live` must name its line).
require "sinatra/base"
require "json"

class ShopApp < Sinatra::Base
  ITEMS = Array.new(200) { |i| { "id" => i, "name" => "item #{i}", "price" => i * 3 } }

  get "/json" do
    content_type :json
    JSON.generate(ITEMS.select { |it| it["price"].even? }.map { |it| it.merge("tax" => it["price"] / 10) })
  end

  get "/slow" do
    sleep 0.01
    "ok"
  end

  ORDERS = []
  get "/order" do
    order = { "id" => rand(1000), "items" => ITEMS.sample(3) }
    text = JSON.generate(order)
    ORDERS << text if ENV["RBSCOPE_TEST_LEAK"] # the planted leak
    text.size.to_s
  end
end
