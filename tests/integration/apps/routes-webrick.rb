# routes-webrick.rb: routes.ru under WEBrick (a thread per connection, one process), for a Ruby Debian builds no
# Puma for (3.4): RBSCOPE_TEST_PORT on loopback; says "Worker 0 booted" twice once it listens, as routes-puma.rb's
# two workers do, for tests/integration/labels.sh.
require "rackup"
require "webrick"

# Answers sent at once (TCP_NODELAY): a kept-alive connection's next request would otherwise wait out the
# client's delayed ACK (40 ms) behind the last answer's second write.
module NoDelay
  private

  def accept_client(server)
    sock = super
    sock&.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
    sock
  end
end
WEBrick::GenericServer.prepend(NoDelay)

app = Rack::Builder.parse_file(File.join(__dir__, "routes.ru"))
app = app.first if app.is_a?(Array) # (Rack 2's parse_file: [app, options])
$stdout.sync = true
Rackup::Handler::WEBrick.run(app, Host: "127.0.0.1", Port: Integer(ENV.fetch("RBSCOPE_TEST_PORT", "9292")),
                                  AccessLog: [], Logger: WEBrick::Log.new(File::NULL),
                                  StartCallback: -> { 2.times { puts "Worker 0 booted (WEBrick #{WEBrick::VERSION})" } })
