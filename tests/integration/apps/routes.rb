# routes.rb: a Sinatra app of three routes of different CPU cost for tests/integration/labels.sh, served by Puma in
# cluster mode (routes.ru). Its outermost middleware measures the CPU time of each whole request
# (CLOCK_THREAD_CPUTIME_ID around the app's call, Sinatra's middleware and route included) and adds it to the
# route's account in its worker, which a thread of the worker's own writes to $RBSCOPE_TEST_STATS.<pid> as JSON every
# 0.2 s (outside any request): the reference the endpoint labels of a profile are checked against.
require "sinatra/base"
require "json"

class RouteCpu
  CPU = Hash.new(0.0)

  def initialize(app)
    @app = app
  end

  def call(env)
    writer
    t0 = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    res = @app.call(env)
    CPU[env["sinatra.route"] || "?"] += Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t0
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

class RoutesApp < Sinatra::Base
  set :environment, :production

  def self.busy(n)
    x = 0
    i = 0
    while i < n
      x += i % 7
      i += 1
    end
    x
  end

  get("/light") { RoutesApp.busy(20_000).to_s }
  get("/medium/:id") { RoutesApp.busy(40_000 + params[:id].to_i % 2).to_s }
  get("/heavy") { RoutesApp.busy(80_000).to_s }
end
