# stuck.rb: a request stuck in a read (tests/integration/labels.sh, --label): its handler's tenant in an instance
# variable, its query in a local, its id in a fiber-local; the main thread works beside it, labelled with nothing.
class Handler
  def initialize(tenant)
    @tenant = tenant
  end

  def handle(query)
    Thread.current[:request_id] = "req-42"
    r, _w = IO.pipe
    r.read # (never written: stuck)
    query
  end
end
t = Thread.new { Handler.new("acme").handle("SELECT * FROM orders WHERE id = 42") }
t.name = "stuck"
Thread.pass until t.status == "sleep"
$stdout.puts "ready"
$stdout.flush
x = 0
loop { x = (x + 1) % 1000 }
