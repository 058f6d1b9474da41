// The API keys and operator views in Chromium against a real server: a key created (keyboard
// only) is shown once with a copy button and works, revoked (keyboard only, after a confirmation
// naming it) it gets 401; revoking the console's own key signs it out. The operator page shows a
// streamed chat running while it is in flight; a tenant's key gets an explanation, not an error.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { consoleErrors, launchBrowser, screenshotBoth, signedInPage, tabTo } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const OPERATOR = "ops";
let isolated: IsolatedServer;
let browser: Browser;
let url = "";
let tenantKey = "";

const whoami = (key: string) => fetch(`${url}/v1/preview/whoami`, { headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  // The isolated server's key is of OPERATOR, made the operator entity; a second entity is a tenant.
  isolated = await startIsolatedServer({ name: "admin", entity: OPERATOR, env: { BOOTSTRAP_ENTITY: OPERATOR } });
  url = isolated.server.url;
  tenantKey = (await new ApiKeys(isolated.db.db).create("tenant")).key;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("API keys view", () => {
  it("creates a key shown once that works, and revokes it, keyboard only", async () => {
    const page = await signedInPage(browser, url, isolated.key);
    const errors = consoleErrors(page);
    await page.goto(`${url}/#/keys`);
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    const ownPrefix = isolated.key.slice(0, 12);
    expect(await page.textContent(`tr[data-prefix="${ownPrefix}"]`)).toContain("this key");

    // Create: Tab to the label, type, Enter.
    await page.locator("body").focus();
    await tabTo(page, "#key-label");
    await page.keyboard.type("eval script");
    await page.keyboard.press("Enter");
    const panel = page.getByRole("region", { name: "New API key" });
    await panel.waitFor();
    expect(await page.locator(".key-created:focus").count()).toBe(1);
    const created = await page.locator("#new-key").inputValue();
    expect(created).toMatch(/^srl_/);
    expect(await panel.textContent()).toContain("this is the only time the key is shown");
    expect(await panel.locator("pre").textContent()).toContain(`export SRL_API_KEY=${created}`);
    // The copy button puts the key on the clipboard.
    await tabTo(page, ".key-row button");
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Copied" }).waitFor();
    // A string: this file is type-checked without the DOM's types.
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(created);
    const prefix = created.slice(0, 12);
    const row = page.locator(`tr[data-prefix="${prefix}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("eval script");
    expect(await row.getAttribute("data-state")).toBe("active");
    await screenshotBoth(page, "keys-created");

    // It works, as its entity.
    const asNew = await whoami(created);
    expect(asNew.status).toBe(200);
    expect(((await asNew.json()) as { entity: string }).entity).toBe(OPERATOR);

    // Shown once: after a reload, only the prefix is on the page.
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(created);

    // Revoke, keyboard only: the dialog names the prefix and starts on Cancel; Escape keeps the key.
    await page.locator("body").focus();
    await tabTo(page, `button[aria-label="Revoke ${prefix}"]`);
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`Revoke key ${prefix}?`);
    expect(await page.locator(":focus").textContent()).toBe("Cancel");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    expect((await whoami(created)).status).toBe(200);
    // Focus went back to the Revoke button: Enter opens it again; Tab to "Revoke key", Enter.
    expect(await page.locator(":focus").getAttribute("aria-label")).toBe(`Revoke ${prefix}`);
    await page.keyboard.press("Enter");
    await dialog.waitFor();
    await page.keyboard.press("Tab");
    expect(await page.locator(":focus").textContent()).toBe("Revoke key");
    await page.keyboard.press("Enter");
    await page.waitForSelector(`tr[data-prefix="${prefix}"][data-state="revoked"]`);
    expect((await whoami(created)).status).toBe(401);
    expect((await whoami(isolated.key)).status).toBe(200);
    await screenshotBoth(page, "keys");
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it("revoking the console's own key signs the console out", async () => {
    const second = (await new ApiKeys(isolated.db.db).create(OPERATOR, "console")).key;
    const page = await signedInPage(browser, url, second);
    // After the revoke the sign-out re-reads nothing with the dead key; a 401 may still be logged.
    const errors = consoleErrors(page, [/status of 401/]);
    await page.goto(`${url}/#/keys`);
    const prefix = second.slice(0, 12);
    const row = page.locator(`tr[data-prefix="${prefix}"]`);
    expect(await row.textContent()).toContain("this key");
    await page.getByRole("button", { name: `Revoke ${prefix}` }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.textContent()).toContain("the console will sign out");
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await page.waitForSelector("input[name=key]");
    expect(page.url()).toMatch(/#\/$/);
    expect(await page.evaluate('sessionStorage.getItem("srl-api-key")')).toBeNull();
    expect((await whoami(second)).status).toBe(401);
    expect(errors).toEqual([]);
    await page.context().close();
  });
});

describe("operator view", () => {
  it("shows a streamed chat running while it is in flight", async () => {
    const page = await signedInPage(browser, url, isolated.key);
    const errors = consoleErrors(page);
    await page.goto(`${url}/#/operator`);
    await page.getByRole("heading", { name: "Engines" }).waitFor();
    expect(await page.textContent('[data-fact="database"]')).toContain("up");

    // A long streamed chat (EOS ignored) holds a sequence until it is aborted.
    const abort = new AbortController();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], ignore_eos: true, max_tokens: 100_000, stream: true }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    try {
      // The page refreshes itself: the running request appears under the model and the entity.
      await page.waitForSelector('.op-models tr[data-model="tiny-chat"] td[data-col="running"]:text("1")', { timeout: 20_000 });
      await page.waitForSelector(`.op-entities tr[data-entity="${OPERATOR}"] td[data-col="running"]:text("1")`, { timeout: 20_000 });
      expect(await page.textContent('.op-models tr[data-model="tiny-chat"] td[data-col="sequences"]')).toMatch(/^[1-9]\d* \/ [1-9]\d*$/);
      expect(await page.locator('.op-models tr[data-model="tiny-chat"] meter').count()).toBe(1);
      expect(await page.locator(".op-engines tbody tr").count()).toBeGreaterThanOrEqual(1);
      await screenshotBoth(page, "operator");
    } finally {
      abort.abort();
      await reader.cancel().catch(() => {});
    }
    // Once it is gone, the next refresh shows nothing running for the entity.
    await page.waitForSelector(`.op-entities tr[data-entity="${OPERATOR}"]`, { state: "detached", timeout: 20_000 });
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it("explains to a tenant that the page is the operator's", async () => {
    const page = await signedInPage(browser, url, tenantKey);
    // Chromium logs the refused request itself (403): that one is expected.
    const errors = consoleErrors(page, [/status of 403/]);
    await page.goto(`${url}/#/operator`);
    await page.waitForSelector("[data-denied]");
    const text = await page.textContent("[data-denied]");
    expect(text).toContain("Only the operator sees this page");
    expect(text).toContain("BOOTSTRAP_ENTITY");
    expect(text).toContain("You are signed in as tenant");
    expect(await page.isHidden("#error")).toBe(true);
    await screenshotBoth(page, "operator-tenant");
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
