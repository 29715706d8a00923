# config.ru: the Rack entry of tests/integration/apps/app.rb.
require_relative "app"
run ShopApp
