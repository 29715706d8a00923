# route_cpu.rb: the CPU time of each whole request (CLOCK_THREAD_CPUTIME_ID around the app's call, its framework's
# middleware and route included), added to its route's account in its worker, which a thread of the worker's own
# writes to $RBSCOPE_TEST_STATS.<pid> as JSON every 0.2 s (outside any request): the reference the endpoint labels
# of a profile are checked against (tests/integration/labels.sh). The outermost middleware of routes.ru and rails.ru.
require "json"

class RouteCpu
  CPU = Hash.new(0.0)

  # The route of a request as each framework names it, once routed (else "?").
  SINATRA = ->(env) { env["sinatra.route"] }
  RAILS = lambda do |env|
    p = env["action_dispatch.request.path_parameters"]
    p && p[:controller] && "#{p[:controller].split("/").map { |s| s.split("_").map(&:capitalize).join }.join("::")}Controller##{p[:action]}"
  end

  def initialize(app, route = SINATRA)
    @app = app
    @route = route
  end

  def call(env)
    writer
    t0 = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    res = @app.call(env)
    route = @route.call(env) || "?"
    CPU[route] += Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t0
    res
  end

  # The worker's writer of its account (started in the worker, at its first request).
  def writer
    return if @writer_pid == Process.pid || !(stats = ENV["RBSCOPE_TEST_STATS"])
    @writer_pid = Process.pid
    Thread.new do
      loop do # (whole: written aside, then renamed over)
        File.write("#{stats}.tmp#{Process.pid}", JSON.generate(CPU))
        File.rename("#{stats}.tmp#{Process.pid}", "#{stats}.#{Process.pid}")
        sleep 0.2
      end
    end
  end
end
