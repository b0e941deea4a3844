/*
 * BadCalls: the calls on a ThreadMXBean that must throw, from HotSpot's ThreadMXBean tests
 * (InvalidThreadID, MaxDepthForThreadInfo, ThreadInfoArray...), each with a valid id 1 next to
 * the bad value where HotSpot's order of checks matters. ApiTest makes them on the bean
 * directly and Client over JMX; both compare what comes back with what this JVM's own
 * java.lang:type=Threading bean throws for the same call: class and message. No vmthread class
 * is named here: the remote client loads this without vmthread.jar.
 */
package io.vmthread.test;

import com.sun.management.ThreadMXBean;

final class BadCalls {
  private BadCalls() {}

  interface Call {
    void call(ThreadMXBean bean) throws Exception;
  }

  static final class Bad {
    final String what;
    final Call call;

    Bad(String what, Call call) {
      this.what = what;
      this.call = call;
    }
  }

  static final Bad[] ALL = {
      new Bad("getThreadCpuTime(0)", b -> b.getThreadCpuTime(0)),
      new Bad("getThreadCpuTime(-7)", b -> b.getThreadCpuTime(-7)),
      new Bad("getThreadUserTime(0)", b -> b.getThreadUserTime(0)),
      new Bad("getThreadCpuTime({1, 0})", b -> b.getThreadCpuTime(new long[] {1, 0})),
      new Bad("getThreadUserTime({-3, 1})", b -> b.getThreadUserTime(new long[] {-3, 1})),
      new Bad("getThreadInfo(0)", b -> b.getThreadInfo(0)),
      new Bad("getThreadInfo({1, -1})", b -> b.getThreadInfo(new long[] {1, -1})),
      new Bad("getThreadInfo(1, -1)", b -> b.getThreadInfo(1, -1)),
      new Bad("getThreadInfo(0, -1)", b -> b.getThreadInfo(0, -1)),
      new Bad("getThreadInfo({1}, -2)", b -> b.getThreadInfo(new long[] {1}, -2)),
      new Bad("getThreadInfo({0}, true, false)",
          b -> b.getThreadInfo(new long[] {0}, true, false)),
      new Bad("getThreadInfo({1}, true, true, -1)",
          b -> b.getThreadInfo(new long[] {1}, true, true, -1)),
      new Bad("getThreadInfo({0}, false, false, -1)",
          b -> b.getThreadInfo(new long[] {0}, false, false, -1)),
      new Bad("getThreadInfo({-5}, false, false, 3)",
          b -> b.getThreadInfo(new long[] {-5}, false, false, 3)),
      new Bad("dumpAllThreads(false, false, -1)", b -> b.dumpAllThreads(false, false, -1)),
      new Bad("getThreadAllocatedBytes(0)", b -> b.getThreadAllocatedBytes(0)),
      new Bad("getThreadAllocatedBytes({2, 0})",
          b -> b.getThreadAllocatedBytes(new long[] {2, 0})),
      new Bad("getThreadInfo((long[]) null)", b -> b.getThreadInfo((long[]) null)),
      new Bad("getThreadCpuTime((long[]) null)", b -> b.getThreadCpuTime((long[]) null)),
      // Null and empty arrays against the other checks: which comes first.
      new Bad("getThreadInfo((long[]) null, 0)", b -> b.getThreadInfo((long[]) null, 0)),
      new Bad("getThreadInfo((long[]) null, -1)", b -> b.getThreadInfo((long[]) null, -1)),
      new Bad("getThreadInfo((long[]) null, false, false, 0)",
          b -> b.getThreadInfo((long[]) null, false, false, 0)),
      new Bad("getThreadInfo((long[]) null, true, true, -1)",
          b -> b.getThreadInfo((long[]) null, true, true, -1)),
      new Bad("getThreadInfo({}, -1)", b -> b.getThreadInfo(new long[0], -1)),
      new Bad("getThreadInfo({}, false, false, -1)",
          b -> b.getThreadInfo(new long[0], false, false, -1)),
      new Bad("getThreadUserTime((long[]) null)", b -> b.getThreadUserTime((long[]) null)),
      new Bad("getThreadAllocatedBytes((long[]) null)",
          b -> b.getThreadAllocatedBytes((long[]) null)),
      new Bad("getThreadCpuTime({Long.MIN_VALUE})",
          b -> b.getThreadCpuTime(new long[] {Long.MIN_VALUE})),
      new Bad("getThreadInfo(Long.MIN_VALUE, Integer.MAX_VALUE)",
          b -> b.getThreadInfo(Long.MIN_VALUE, Integer.MAX_VALUE)),
  };
}
