// flamegraph.js: open rbscope's flame graph (SVG, or the HTML report) in headless Chromium and use it.
// Usage: node flamegraph.js FILE FRAME SEARCH [WHERE] — FRAME must be drawn, clicking it must zoom it to the full
// width, and searching SEARCH must highlight frames and show a matched share. For the HTML report (.html),
// the summary tables must be visible and list FRAME too. WHERE (a CSS selector, default the page) holds the
// flame graph to use, for a page with more than one. Exits 0, or 1 with the reason.
'use strict';
const path = require('path');
const { chromium } = require(path.join(process.env.NPM_DIR, 'playwright-core'));

async function main() {
	const [file, frame, query, where] = process.argv.slice(2);
	const FG = (where ? where + ' ' : '') + 'svg.rbscope-fg';
	const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
	const errors = [];
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		page.on('pageerror', (e) => errors.push(String(e)));
		await page.goto('file://' + path.resolve(file));
		const svg = page.locator(FG).first();
		await svg.waitFor();
		const names = await page.$$eval(FG + ' g.f title', (ts) => ts.map((t) => t.textContent));
		if (!names.some((n) => n.startsWith(frame + ' ')))
			throw new Error(`no frame "${frame}" among ${names.length} frames`);
		const full = await page.$eval(FG, (s) => +s.getAttribute('data-w') - 2 * +s.getAttribute('data-pad'));
		// The widest frame of that name, clicked in the middle.
		const target = await page.evaluateHandle(([name, fg]) => {
			let best = null;
			for (const g of document.querySelectorAll(fg + ' g.f')) {
				if (!g.querySelector('title').textContent.startsWith(name + ' '))
					continue;
				const w = +g.querySelector('rect').getAttribute('width');
				if (!best || w > +best.querySelector('rect').getAttribute('width'))
					best = g;
			}
			return best;
		}, [frame, FG]);
		const before = await target.evaluate((g) => +g.querySelector('rect').getAttribute('width'));
		if (before >= full - 0.5)
			throw new Error(`"${frame}" is already full width (${before}); cannot test zoom`);
		// (the frame's group: its label may lie over the middle of its rectangle, and a click on either zooms)
		await target.asElement().click();
		const after = await target.evaluate((g) => +g.querySelector('rect').getAttribute('width'));
		if (Math.abs(after - full) > 0.5)
			throw new Error(`click did not zoom: width ${before} -> ${after}, full is ${full}`);
		const hidden = await page.$$eval(FG + ' g.f', (gs) => gs.filter((g) => g.style.display === 'none').length);
		if (!hidden)
			throw new Error('zoom hid no frame outside the zoomed one');
		await page.click(FG + ' .reset');
		const reset = await target.evaluate((g) => +g.querySelector('rect').getAttribute('width'));
		if (Math.abs(reset - before) > 0.01)
			throw new Error(`reset zoom did not restore the width: ${reset} vs ${before}`);
		await page.fill(FG + ' input.search', query);
		const hits = await page.$$eval(FG + ' g.f.hit', (gs) => gs.length);
		const matched = await page.textContent(FG + ' .matched');
		const pct = parseFloat((matched.match(/([0-9.]+)%/) || [])[1]);
		if (!hits || !(pct > 0 && pct <= 100))
			throw new Error(`search "${query}": ${hits} highlighted, matched text "${matched}"`);
		let tables = '';
		if (file.endsWith('.html')) {
			for (const id of ['#meta', '#by-function', '#by-line']) {
				if (!(await page.isVisible(id)))
					throw new Error(`table ${id} is not visible`);
			}
			const text = await page.innerText('#by-function');
			if (!text.includes(frame))
				throw new Error(`"${frame}" is not in the functions table`);
			tables = ', tables shown';
		}
		if (errors.length)
			throw new Error('page errors: ' + errors.join('; '));
		console.log(`ok: ${names.length} frames, zoomed "${frame}" ${before.toFixed(1)} -> ${after.toFixed(1)}px, ` +
			`search "${query}" highlighted ${hits} (${matched.trim()})${tables}`);
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.log('fail: ' + e.message);
	process.exit(1);
});
