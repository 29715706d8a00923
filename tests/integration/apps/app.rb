# app.rb: a small Sinatra app served by Debian's puma in cluster mode for tests/integration/apps.sh: a JSON route
# (work in Ruby, allocations, a C extension) and a slow one.
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
end
