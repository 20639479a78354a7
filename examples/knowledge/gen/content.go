package main

// The text of the two binary documents of the sample knowledge base. Every
// fact the suite asks about is stated once in the whole base, so that each
// question has one right source.

// guideTitle and guide are the user guide, a PDF: each page has a title,
// and each section a heading set smaller.
const guideTitle = "Kestrel User Guide"

var guide = []page{
	{Title: "Kestrel User Guide", Sections: []section{
		{Paragraphs: []string{
			"Kestrel keeps the files of a small team in step across computers and phones. This guide covers installing the desktop app, the first sync, working with files, sharing, and the settings people change most. It describes version 4.2 of the desktop app.",
		}},
		{Heading: "System requirements", Paragraphs: []string{
			"The desktop app runs on Windows 10 or later, macOS 13 Ventura or later, and Ubuntu 22.04 or later. Other Linux distributions work when they ship glibc 2.35 or newer, but they are not tested before a release.",
			"Kestrel needs 4 GB of memory and 800 MB of free disk space for the app itself, besides the space that your synced files take. A screen of at least 1280 by 720 pixels is recommended.",
			"The mobile apps need iOS 16 or Android 11 or later. They show every file of the account but download a file only when you open it.",
		}},
		{Heading: "Installing the desktop app", Paragraphs: []string{
			"On Windows, run KestrelSetup.exe and follow the installer. It asks for administrator rights once, to add the Kestrel folder to the navigation pane of File Explorer.",
			"On macOS, open Kestrel.dmg and drag the Kestrel icon onto the Applications folder. The first start asks for permission to show files on demand in Finder.",
			"On Linux, add the Kestrel apt repository and install the kestrel-desktop package. The app then starts with your session; to stop that, untick Start with the system in Settings.",
			"Whatever the system, the installer ends by signing you in with the email address and password of your Kestrel account, and by asking where the Kestrel folder should live.",
		}},
		{Heading: "The first sync", Paragraphs: []string{
			"When you choose a folder to sync, Kestrel indexes it first, at about 3,000 files per minute on a typical laptop, and only then starts uploading. Large folders of photos take longest, because each picture gets a thumbnail.",
			"Files larger than 75 GB are never synced. Kestrel lists them under Activity, with the reason, so that nothing is skipped silently.",
			"The icon in the menu bar or the system tray tells you where things stand: a green tick means every file is up to date, blue arrows mean a sync is running, and a red cross means an error that needs you.",
		}},
	}},
	{Title: "Working with files", Sections: []section{
		{Heading: "Selective sync", Paragraphs: []string{
			"Selective sync keeps some folders in the cloud only, to save room on a small disk. Open Settings, then Folders, and untick the folders this computer should not download. Unticked folders stay available on the web and on your other devices.",
		}},
		{Heading: "Files on demand", Paragraphs: []string{
			"With files on demand, every file appears in the Kestrel folder but takes no disk space until it is opened. To keep a file on this device for a journey, right-click it and choose Keep offline; a solid green circle marks the files kept offline.",
			"Files you have not opened for 90 days go back to the cloud by themselves when the disk runs short of space, unless they are marked Keep offline.",
		}},
		{Heading: "Sharing links", Paragraphs: []string{
			"A sharing link lets anyone who has it view or download a file or folder, without a Kestrel account. Create one by right-clicking the item and choosing Copy sharing link.",
			"Links expire after 14 days unless you choose another expiry date, anywhere from one day to one year. A link can also ask for a password, and on the Team plan it can be limited to the people of your organisation.",
			"Shared folders are different from links: the people you invite to a shared folder see it in their own Kestrel folder and can edit what is in it.",
		}},
		{Heading: "Version history and the Trash", Paragraphs: []string{
			"Every save keeps the previous version of the file; how long versions are kept depends on your plan. Open a file's menu and choose Version history to see them, then Restore to bring one back.",
			"Deleted files go to the Trash, where they stay for 45 days before they are removed for good. To get one back, open the Trash on the web, right-click the file and choose Restore.",
		}},
		{Heading: "Scanning documents", Paragraphs: []string{
			"The mobile apps can scan paper documents with the camera. A scan is saved as a searchable PDF in the Scans folder, and its text can be found by the quick search within a few minutes.",
		}},
	}},
	{Title: "Settings and shortcuts", Sections: []section{
		{Heading: "Network", Paragraphs: []string{
			"By default Kestrel uses all the bandwidth it can get. Under Settings, then Network, you can cap the upload rate and the download rate separately, in kilobytes per second.",
			"LAN sync lets computers on the same local network copy file blocks from each other instead of downloading them again. LAN sync listens on port 47810, and it can be turned off on the same page.",
		}},
		{Heading: "Keyboard shortcuts", Paragraphs: []string{
			"Press Ctrl+Shift+K (Cmd+Shift+K on a Mac) to open the quick search window from anywhere. Press Ctrl+Shift+P to pause syncing, and the same keys again to resume it.",
		}},
		{Heading: "Notifications", Paragraphs: []string{
			"Kestrel notifies you when someone shares a folder with you, when a file you shared is edited, and when your storage reaches 90 percent of the quota. Each kind can be switched off under Settings, then Notifications.",
		}},
		{Heading: "Several accounts", Paragraphs: []string{
			"The desktop app can be signed in to one personal and one work account at the same time. Each account has its own Kestrel folder, with the account's name in the folder name.",
		}},
		{Heading: "Language and appearance", Paragraphs: []string{
			"The app follows the language of the system; 14 languages are available, and Settings, then General, picks another one. A dark theme follows the system too, or can be forced on or off.",
		}},
	}},
	{Title: "Teams", Sections: []section{
		{Paragraphs: []string{
			"On the Team and Enterprise plans, one organisation holds the accounts of its members, and administrators manage them from the admin console on the web.",
		}},
		{Heading: "Inviting members", Paragraphs: []string{
			"An administrator invites people from the admin console, by email address or by uploading a CSV file of addresses. An invitation stays valid for 10 days; after that, send a new one.",
			"People whose email address is on a domain the organisation has verified can join without an invitation, when the administrator allows it.",
		}},
		{Heading: "Roles", Paragraphs: []string{
			"Members have one of three roles. Owners manage billing and can do everything administrators do. Administrators manage members, groups and settings. Members use Kestrel and manage their own files.",
			"An organisation always keeps at least one owner: the last owner cannot leave or be demoted.",
		}},
		{Heading: "Team folders", Paragraphs: []string{
			"A team folder belongs to the organisation rather than to one person, so its files stay when a member leaves. Administrators choose which groups see each team folder and whether they can edit it.",
			"Storage used by team folders counts against the pooled storage of the organisation, not against any member's.",
		}},
		{Heading: "When a member leaves", Paragraphs: []string{
			"When an administrator removes a member, the files that member owned can be handed to another member in one step. Devices of the removed member stop syncing and, if remote wipe was chosen, delete the Kestrel folder the next time they go online.",
		}},
	}},
	{Title: "Mobile apps and integrations", Sections: []section{
		{Heading: "Camera uploads", Paragraphs: []string{
			"The mobile apps can upload new photos and videos by themselves into the Camera Uploads folder. By default they upload over Wi-Fi only; allowing mobile data is a switch in the app's settings.",
			"Photos keep their original quality and their location data, unless you choose to strip the location before upload.",
		}},
		{Heading: "Passcode lock", Paragraphs: []string{
			"A passcode of four or six digits, or the phone's face or fingerprint unlock, can protect the mobile app. After 10 wrong passcodes the app signs out and removes its offline files.",
		}},
		{Heading: "Office documents", Paragraphs: []string{
			"Word, Excel and PowerPoint files open in Microsoft Office on the web straight from Kestrel, and several people can edit them at once. Changes are saved back into the same file, with a new version each time.",
		}},
		{Heading: "Connected apps", Paragraphs: []string{
			"Kestrel connects to Slack and Microsoft Teams, to share links in a channel and to be notified of changes there. Developers can use the Kestrel REST API with a personal access token; a token can read and write files but never change billing.",
			"Each organisation can make 1,200 API requests per minute; past that, requests are answered with status 429 and a Retry-After header.",
		}},
	}},
}

// billingTitle and billing are the plans and billing policy, a DOCX:
// headings, a table of the plans and bulleted lists.
const billingTitle = "Kestrel Plans and Billing"

var billing = []para{
	{Style: "Title", Text: "Kestrel Plans and Billing"},
	{Text: "This document describes the Kestrel plans, how you are billed, and how to change or cancel a plan. Prices are in US dollars, before tax."},
	{Style: "Heading1", Text: "Plans at a glance"},
	{Cells: []string{"Plan", "Price", "Storage", "Devices", "Version history"}},
	{Cells: []string{"Free", "$0", "5 GB", "2 devices", "7 days"}},
	{Cells: []string{"Personal", "$8 per month", "1 TB", "5 devices", "30 days"}},
	{Cells: []string{"Team", "$15 per user per month", "3 TB per user", "Unlimited devices", "180 days"}},
	{Cells: []string{"Enterprise", "Quoted on request", "As agreed", "Unlimited devices", "365 days"}},
	{Text: "Paying yearly instead of monthly saves 20 percent on the Personal and Team plans. A Team plan needs at least 3 users, and every user counts, active or not."},
	{Style: "Heading1", Text: "Paying"},
	{Text: "Kestrel accepts these payment methods:"},
	{List: true, Text: "Visa, Mastercard and American Express cards."},
	{List: true, Text: "PayPal, in every country where PayPal works."},
	{List: true, Text: "Bank transfer, for yearly Team and Enterprise plans only."},
	{List: true, Text: "Apple Pay and Google Pay, in the mobile apps."},
	{Text: "Sales tax or VAT is added where the law requires it, and the invoice shows it on a line of its own."},
	{Style: "Heading1", Text: "Invoices"},
	{Text: "An invoice is emailed to the account owner on the first day of each billing period. Every invoice since the account was opened can be downloaded as a PDF from Billing, then Invoices."},
	{Text: "To put a company name, an address or a VAT number on invoices, fill in the Billing details page. The change applies to the next invoice, not to earlier ones."},
	{Style: "Heading1", Text: "Failed payments"},
	{Text: "When a payment fails, Kestrel tries the card again 3 times over a week and emails the owner each time."},
	{Text: "If every attempt fails, the account drops to the Free plan. Nothing is deleted, but files beyond the Free storage become read-only until the account is back under its quota."},
	{Style: "Heading1", Text: "Refunds"},
	{Text: "Refund requests are accepted within 21 days of the first payment of a plan, for the whole amount."},
	{Text: "After that period, yearly plans are refunded pro rata for the full months left, and monthly plans are not refunded."},
	{Text: "Ask for a refund from Billing, then Cancel plan, or write to billing@kestrel.example from the owner's address."},
	{Style: "Heading1", Text: "Changing or cancelling a plan"},
	{Text: "An upgrade takes effect at once: you pay the difference for the rest of the billing period, and the new storage is there within a minute."},
	{Text: "A downgrade or a cancellation takes effect at the end of the billing period you have paid for."},
	{Text: "The files of a cancelled account are kept for 120 days, read-only, and then deleted. Signing up again within that time brings them back as they were."},
	{Style: "Heading1", Text: "Discounts"},
	{List: true, Text: "Students and teachers get 50 percent off the Personal plan when they sign up with a school email address."},
	{List: true, Text: "Registered nonprofits get the Team plan at $6 per user per month."},
	{List: true, Text: "Maintainers of open-source projects can ask for a free Team plan for their project."},
	{Style: "Heading2", Text: "How discounts combine"},
	{Text: "Discounts do not add up: an account gets the largest one it is entitled to. The yearly saving does apply on top of a discount."},
	{Style: "Heading1", Text: "Seats on the Team plan"},
	{Text: "Adding a seat in the middle of a billing period costs a prorated share of the seat's price for the days that remain. Removing a seat lowers the next invoice; the current period is not credited back."},
	{Text: "Storage on the Team plan is pooled: the organisation's storage is 3 TB for each paid seat, and any member can use any part of it."},
	{Style: "Heading1", Text: "Extra storage"},
	{Text: "Personal and Team accounts can buy extra storage in blocks of 500 GB, at $4 per block per month. Extra storage is billed with the plan and ends with it."},
	{Style: "Heading1", Text: "Currencies and regions"},
	{Text: "Prices are charged in US dollars, euros, pounds sterling or Japanese yen, depending on the billing address. The currency of an account cannot change once it has paid its first invoice."},
	{Text: "Customers in the European Union who give a valid VAT number are not charged VAT; the reverse charge is noted on the invoice."},
	{Style: "Heading1", Text: "Enterprise contracts"},
	{Text: "Enterprise plans are sold under a yearly contract with a minimum of 50 seats. The contract can add a service level agreement of 99.95 percent monthly uptime, with service credits when it is missed."},
	{Text: "Enterprise customers pay by invoice, with payment due one month after the invoice date, and can ask for a purchase order number on every invoice."},
	{Style: "Heading1", Text: "Trial"},
	{Text: "Every new Team organisation starts with a free trial of 15 days with all Team features. No card is needed to start the trial; at its end, the organisation chooses a plan or drops to Free."},
}
