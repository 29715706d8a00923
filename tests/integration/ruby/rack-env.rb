# rack-env.rb: a plain Rack app (no framework names its routes) called in a loop with two kinds of path, each with
# ids in it, for tests/integration/labels.sh: the label comes from the env of its call(env), ids as :id; the heavy
# path does three times the work of the other.
require "rack"

class Plain
  def call(env)
    x = 0
    n = env["PATH_INFO"].start_with?("/heavy") ? 60_000 : 20_000
    i = 0
    (x += i % 7; i += 1) while i < n
    [200, {}, [x.to_s]]
  end
end

app = Rack::Lint.new(Plain.new)
$stdout.sync = true
puts "ready"
loop do
  app.call(Rack::MockRequest.env_for("/users/#{rand(1000)}/items"))
  app.call(Rack::MockRequest.env_for("/heavy/0123456789abcdef0123"))
end
