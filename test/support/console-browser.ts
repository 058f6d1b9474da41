// The console in a real browser (Debian's Chromium driven by playwright-core): launching it,
// signing in with an API key, and screenshots of a view at a desktop and a phone width, saved to
// test/artifacts/console/ (the note's pictures come from there).
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

export const screenshotDir = join(import.meta.dirname, "..", "artifacts", "console");

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 420, height: 900 };

export async function launchBrowser(): Promise<Browser> {
  await mkdir(screenshotDir, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** A new page at desktop size, signed in with `key` (the key is kept in the tab's session storage). */
export async function signedInPage(browser: Browser, baseUrl: string, key: string): Promise<Page> {
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
  const page = await context.newPage();
  await page.goto(baseUrl);
  await page.fill("input[name=key]", key);
  await page.click("button[type=submit]");
  await page.waitForSelector("#who:has-text('signed in as')");
  return page;
}

/**
 * Saves `<name>-1280.png` (the window, 1280x800) and `<name>-420.png` (the whole page at 420 px
 * wide), then puts the window back to desktop size. `ready` runs after each resize, for views that
 * redraw (charts) to settle.
 */
export async function screenshotBoth(page: Page, name: string, ready?: () => Promise<void>): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await ready?.();
  await page.screenshot({ path: join(screenshotDir, `${name}-1280.png`) });
  await page.setViewportSize(PHONE);
  await ready?.();
  await page.screenshot({ path: join(screenshotDir, `${name}-420.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/**
 * Collects what the page reports as errors (console.error, uncaught exceptions, failed requests
 * other than those `expected` matches): a view that works leaves this empty.
 */
export function consoleErrors(page: Page, expected: RegExp[] = []): string[] {
  const errors: string[] = [];
  const keep = (text: string) => {
    if (!expected.some((pattern) => pattern.test(text))) errors.push(text);
  };
  page.on("console", (message) => {
    if (message.type() === "error") keep(`console: ${message.text()} (${message.location().url})`);
  });
  page.on("pageerror", (error) => keep(`page: ${error.message}`));
  return errors;
}

/**
 * Presses Tab until the focused element matches `selector` (any Playwright selector; none when it
 * already does): how a keyboard user gets there; throws, naming where focus is, when `max` presses never reach it.
 */
export async function tabTo(page: Page, selector: string, max = 60): Promise<void> {
  const focused = async () => (await page.locator(selector).and(page.locator(":focus")).count()) > 0;
  for (let i = 0; i < max; i++) {
    if (await focused()) return;
    await page.keyboard.press("Tab");
  }
  if (await focused()) return;
  throw new Error(`Tab never reached ${selector} (focus is on ${await page.evaluate<string>("document.activeElement?.outerHTML.slice(0, 120) ?? 'nothing'")})`);
}
