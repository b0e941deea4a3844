/*
 * Check: the JVM tests' assertions (no test framework is available offline). Each check
 * prints PASS/FAIL with what it checked; Main prints the closing "N passed, M failed".
 */
package io.vmthread.test;

import java.util.Arrays;
import java.util.Objects;
import java.util.function.BooleanSupplier;

final class Check {
  static int passed;
  static int failed;

  private Check() {}

  interface Action {
    void run() throws Exception;
  }

  static void that(boolean ok, String what) {
    if (ok) {
      passed++;
      System.out.println("PASS: " + what);
    } else {
      failed++;
      System.out.println("FAIL: " + what);
    }
  }

  static void equal(Object expected, Object actual, String what) {
    boolean ok = Objects.deepEquals(expected, actual);
    that(ok, what + (ok ? "" : " (expected " + show(expected) + ", got " + show(actual) + ")"));
  }

  private static String show(Object o) {
    return o instanceof long[] ? Arrays.toString((long[]) o) : String.valueOf(o);
  }

  /** Passes if action throws an exception of type cls (directly or as a cause). */
  static void throwsA(Class<? extends Throwable> cls, Action action, String what) {
    try {
      action.run();
      that(false, what + " (nothing thrown, expected " + cls.getSimpleName() + ")");
    } catch (Throwable t) {
      for (Throwable c = t; c != null; c = c.getCause()) {
        if (cls.isInstance(c)) {
          that(true, what + " (" + cls.getSimpleName() + ": " + c.getMessage() + ")");
          return;
        }
      }
      that(false, what + " (expected " + cls.getSimpleName() + ", got " + t + ")");
    }
  }

  /** Passes if both actions fail with the same exception class and message (the first is the
   *  reference: HotSpot's own bean). */
  static void sameFailure(Action reference, Action action, String what) {
    Throwable want = failure(reference);
    Throwable got = failure(action);
    boolean ok = want != null && got != null && want.getClass() == got.getClass()
        && Objects.equals(want.getMessage(), got.getMessage());
    that(ok, what + " (" + got + (ok ? "" : ", expected " + want) + ")");
  }

  /** What action threw, unwrapped from JMX's wrappers (RuntimeMBeanException and the like
   *  carry the bean's exception as their cause); null if nothing. */
  static Throwable failure(Action action) {
    try {
      action.run();
      return null;
    } catch (Throwable t) {
      Throwable c = t;
      while ((c instanceof javax.management.JMRuntimeException
          || c instanceof javax.management.MBeanException
          || c instanceof javax.management.ReflectionException
          || c instanceof java.lang.reflect.UndeclaredThrowableException)
          && c.getCause() != null) {
        c = c.getCause();
      }
      return c;
    }
  }

  /** Waits (up to 10 s, never asserted as a time) until cond holds; the caller checks it. */
  static boolean eventually(BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  static boolean contains(long[] values, long v) {
    for (long x : values) {
      if (x == v) {
        return true;
      }
    }
    return false;
  }
}
