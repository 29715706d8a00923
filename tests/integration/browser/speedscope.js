// speedscope.js: load a speedscope file in speedscope's own app (headless Chromium) and read what it shows.
// Usage: node speedscope.js FILE THREAD=FRAME... — the file must import without an error, and for each
// THREAD=FRAME there must be a profile named "THREAD (tid N)" whose Sandwich table lists FRAME with at
// least half of that thread's time, while no other given FRAME appears there. Prints "ok ..." and exits
// 0, or prints the reason and exits 1.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const { chromium } = require(path.join(process.env.NPM_DIR, 'playwright-core'));

const app = path.join(process.env.NPM_DIR, 'speedscope', 'dist', 'release');

// The app's files and, at /profile.json, the file under test; nothing else.
function serve(file) {
	const server = http.createServer((req, res) => {
		const url = decodeURIComponent(req.url.split(/[?#]/)[0]);
		const target = url === '/profile.json' ? file : path.join(app, path.normalize(url === '/' ? '/index.html' : url));
		fs.readFile(target, (err, data) => {
			res.writeHead(err ? 404 : 200);
			res.end(err ? '' : data);
		});
	});
	return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// The toolbar shows the active profile as "NAME (I/N)", or only NAME when there is one profile.
async function activeProfile(page) {
	const text = await page.innerText('body');
	const m = text.match(/^(.*) \((\d+)\/(\d+)\)$/m);
	return m ? { name: m[1], index: +m[2], count: +m[3] } : { name: '(the only profile)', index: 1, count: 1 };
}

// The Sandwich table: symbol name -> total share in percent (the largest, when a name has several rows).
async function sandwichRows(page) {
	return page.evaluate(() => {
		const rows = {};
		for (const tr of document.querySelectorAll('tr')) {
			const cells = [...tr.querySelectorAll('td')].map((td) => td.innerText.trim());
			const pct = cells.length >= 3 ? cells[0].match(/\(([<>0-9.]+)%\)/) : null;
			if (!pct)
				continue;
			// A method seen at several lines is one row per line: keep its largest share.
			const name = cells[cells.length - 1], v = parseFloat(pct[1].replace(/[<>]/, ''));
			rows[name] = Math.max(rows[name] || 0, v);
		}
		return rows;
	});
}

async function main() {
	const [file, ...pairs] = process.argv.slice(2);
	const want = pairs.map((p) => p.split('='));
	const server = await serve(path.resolve(file));
	const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
	const problems = [];
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		let fail;
		const failed = new Promise((resolve) => (fail = resolve));
		page.on('pageerror', (e) => {
			problems.push(`page error: ${e}`);
			fail();
		});
		page.on('dialog', (d) => {
			problems.push(`dialog: ${d.message()}`);
			fail();
			d.dismiss();
		});
		const base = `http://127.0.0.1:${server.address().port}`;
		await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + '/profile.json')}&view=sandwich`);
		const shown = page.waitForFunction(() => /Symbol Name|Something went wrong/.test(document.body.innerText),
			null, { timeout: 30000 }).catch(() => problems.push('no profile shown within 30 s'));
		await Promise.race([shown, failed]);
		if ((await page.innerText('body')).includes('Something went wrong'))
			problems.push('speedscope shows "Something went wrong"');
		if (problems.length)
			throw new Error(problems.join('; '));
		const first = await activeProfile(page);
		const seen = {};
		for (let i = 0; i < first.count; i++) {
			const active = await activeProfile(page);
			await page.waitForFunction(() => [...document.querySelectorAll('td')].some((td) => /%\)/.test(td.innerText)));
			/* The title changes before the table is drawn again: wait (at most 10 s) until the method this
			   thread is expected to show is listed, or, for other threads, until two reads agree. */
			const expect = (want.find(([t]) => active.name.startsWith(t + ' (tid ')) || [])[1];
			let rows = await sandwichRows(page), prev = '';
			for (let tries = 0; tries < 50; tries++) {
				if (expect ? rows[expect] >= 50 : JSON.stringify(rows) === prev)
					break;
				prev = JSON.stringify(rows);
				await page.waitForTimeout(200);
				rows = await sandwichRows(page);
			}
			seen[active.name] = rows;
			await page.keyboard.press('n');
			await page.waitForFunction((n) => !document.body.innerText.includes(`(${n}/`), active.index, { timeout: 5000 })
				.catch(() => {});
		}
		const names = Object.keys(seen);
		for (const [thread, frame] of want) {
			const name = names.find((n) => n.startsWith(thread + ' (tid '));
			if (!name) {
				problems.push(`no profile "${thread} (tid N)" among ${JSON.stringify(names)}`);
				continue;
			}
			const rows = seen[name];
			if (!(rows[frame] >= 50))
				problems.push(`"${name}": ${frame} has ${rows[frame]}% (rows: ${Object.keys(rows).slice(0, 8).join(', ')})`);
			for (const [, other] of want)
				if (other !== frame && other in rows)
					problems.push(`"${name}" also lists ${other}`);
		}
		if (problems.length)
			throw new Error(problems.join('; '));
		const shares = want.map(([t, f]) => `${f} ${seen[names.find((n) => n.startsWith(t + ' ('))][f]}%`);
		console.log(`ok ${names.length} profiles (${names.join(', ')}); ${shares.join(', ')}`);
	} finally {
		await browser.close();
		server.close();
	}
}

main().catch((e) => {
	console.log(String(e.message || e));
	process.exit(1);
});
