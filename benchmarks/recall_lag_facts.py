"""The recall-lag benchmark's facts: each said once by the user, then asked about in other words.

Each fact is a thing a user tells the agent in passing ("the Lisbon dock closes early on
Fridays because of the river tide"); its question asks for it as a user would a few turns
later, mostly in other words; its key is a plain-words part of the fact that a summary's
identifier ledger would not keep, so finding the key means recall brought the sentence back.

Two sets, written apart: the tuning set chooses recall's rules and constants, the held-out set
(another writer's style: terse notes, longer questions, fewer shared words) only judges them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    said: str
    question: str
    key: str


TUNING = [
    Fact(
        "Note for later: the Lisbon warehouse code is LX-4471-BARS, and the Lisbon dock closes early on Fridays "
        "because of the river tide.",
        "Which warehouse code did I give you for Lisbon, and when does its dock close?",
        "river tide",
    ),
    Fact(
        "Keep in mind that the marketing team changed the attribution window from 7 days to 28 days in June, so "
        "conversions before and after are not comparable.",
        "Why can't I compare conversions across the summer?",
        "attribution window",
    ),
    Fact(
        "The sensor on line 3 was recalibrated on the 14th; readings before that are about 2.5 degrees too warm.",
        "What was off with the temperature readings of the third production line?",
        "2.5 degrees",
    ),
    Fact(
        "Remember: our fiscal year starts in April, so Q1 means April to June for every report we make.",
        "When does the first quarter begin in our reports?",
        "fiscal year starts in April",
    ),
    Fact(
        "The vendor file uses semicolons as separators and commas as decimal marks, because it comes from the "
        "German office.",
        "How should I parse the supplier CSV from Germany?",
        "semicolons",
    ),
    Fact(
        "Don't trust the ages in the survey: respondents under 18 were told to type 99, so 99 really means a minor.",
        "What does an age of 99 mean in the questionnaire data?",
        "means a minor",
    ),
    Fact(
        "Our biggest customer, Halvorsen Shipping, always pays 60 days late but has never defaulted, so exclude "
        "them from the overdue alerts.",
        "Which client should be kept out of the late-payment warnings?",
        "Halvorsen",
    ),
    Fact(
        "The A/B test on the checkout button ran with 3% of traffic in the variant, not 50%, because legal asked "
        "us to limit exposure.",
        "What share of visitors saw the new checkout design?",
        "3% of traffic",
    ),
    Fact(
        "The hospital admissions data double counts transfers between wards; deduplicate on patient id and "
        "admission date before counting.",
        "How do I avoid counting ward transfers twice?",
        "patient id and admission date",
    ),
    Fact(
        "Store 112 in Porto was closed for renovation all of March, which explains its zero sales that month.",
        "Why does the Porto shop show nothing sold in spring?",
        "renovation",
    ),
    Fact(
        "My manager wants every chart to use the company palette: navy for actuals and orange for the forecast.",
        "What colours should the plots use?",
        "navy for actuals",
    ),
    Fact(
        "The exchange rate table stops at 2021; for later years use the constant rate of 1.08 dollars per euro "
        "agreed with finance.",
        "What conversion should I apply for euro amounts after 2021?",
        "1.08 dollars",
    ),
    Fact(
        "Weekend traffic spikes in the web logs are a crawler from our own SEO tool, user agent SiteProbe, and "
        "should be filtered out.",
        "What causes the Saturday and Sunday surges in visits?",
        "SiteProbe",
    ),
    Fact(
        "The column 'amt' in the legacy ledger is in cents, not euros; divide by 100 before summing.",
        "What unit is the amount field of the old accounting table in?",
        "in cents",
    ),
    Fact(
        "The pilot of the loyalty app only ran in the Nordics, so any uplift we see elsewhere is noise.",
        "In which region was the rewards app trial?",
        "Nordics",
    ),
    Fact(
        "The clinical trial arm labelled B is actually the placebo; the labels were swapped by the lab in the export.",
        "Which group in the study received no active treatment?",
        "placebo",
    ),
    Fact(
        "Our data warehouse refreshes at 04:30 UTC, so any query before that sees yesterday's numbers.",
        "When is the nightly reload of the analytics database?",
        "04:30 UTC",
    ),
    Fact(
        "The retail price list ignores VAT for business customers, who are tagged with segment code B2B-7.",
        "How are the corporate buyers marked in the pricing data?",
        "B2B-7",
    ),
    Fact(
        "Sales from the Black Friday week should be reported separately, because the CEO wants them out of the "
        "trend lines.",
        "What should I do with the late-November promotion week in the trend?",
        "reported separately",
    ),
    Fact(
        "The survey weights in column w_final already include the non-response adjustment, so do not reweight.",
        "Do the questionnaire weights still need correcting for people who didn't answer?",
        "non-response adjustment",
    ),
]

HELD_OUT = [
    Fact(
        "fyi the Madrid depot's loading bay shuts at 3pm on Sundays since the new labour agreement",
        "till what time can trucks unload at the Spanish distribution centre on weekends?",
        "shuts at 3pm",
    ),
    Fact(
        "heads up: churn labels before 2020 came from an old definition (90 days inactive), now it's 60 days",
        "how did the definition of a lost customer change over time?",
        "90 days inactive",
    ),
    Fact(
        "the lab's spectrometer saturates above 4000 counts, so clip those values rather than trusting them",
        "what should happen to the very high instrument readings from the lab?",
        "saturates above 4000",
    ),
    Fact(
        "invoices from Tromso are issued in NOK and have to be converted with the invoice-date rate",
        "which currency do the bills from our northern Norway branch come in, and which rate applies?",
        "issued in NOK",
    ),
    Fact(
        "ignore everything tagged QA-SANDBOX in the event stream, that's our testers clicking around",
        "which events come from internal testing and should be dropped before the funnel analysis?",
        "QA-SANDBOX",
    ),
    Fact(
        "rainfall column is in tenths of a millimetre, a quirk of the met office feed",
        "what unit is precipitation measured in, in the weather data?",
        "tenths of a millimetre",
    ),
    Fact(
        "our Kaggle baseline to beat is a log loss of 0.4312 from last year's model",
        "what score does the new classifier need to improve on?",
        "0.4312",
    ),
    Fact(
        "patients enrolled at the Coimbra site used a different blood pressure cuff: add 4 mmHg to their systolic "
        "values",
        "is there a correction to apply to readings from one of the Portuguese clinics?",
        "4 mmHg",
    ),
    Fact(
        "promo code SPRINGFREE was a bug that gave 100% off for two hours on May 3rd, treat those orders as fraud",
        "what happened with that discount glitch in May and how do we treat the affected purchases?",
        "SPRINGFREE",
    ),
    Fact(
        "timestamps in the mobile app table are device local time, not UTC, so don't join them directly to server logs",
        "why might the phone app events misalign with the backend records?",
        "device local time",
    ),
    Fact(
        "the board only cares about gross margin, not revenue, so lead every summary with margin",
        "what metric should the executive recap start with?",
        "gross margin",
    ),
    Fact(
        "rows where region == 'XX' are test shipments to our own office in Zurich",
        "what are the deliveries with the strange placeholder region code?",
        "office in Zurich",
    ),
    Fact(
        "never email the raw customer file, finance says only aggregated figures may leave the team",
        "can I send the client list to someone outside our group?",
        "only aggregated figures",
    ),
    Fact(
        "the elasticity estimate from the pricing study was -1.7 with wide error bars, use it carefully",
        "how responsive is demand to price according to that study we did?",
        "-1.7",
    ),
    Fact(
        "daylight saving broke the hourly energy series in October: there are two 02:00 rows on the 27th",
        "why does the power consumption data have a duplicated hour in autumn?",
        "two 02:00 rows",
    ),
    Fact(
        "inventory counts from warehouse 9 are weekly, all the other sites report daily",
        "which site sends its stock numbers less often than the rest?",
        "warehouse 9",
    ),
    Fact(
        "use the median, not the mean, for delivery times: a handful of parcels were lost for months",
        "which kind of average should describe shipping durations?",
        "median, not the mean",
    ),
    Fact(
        "the new recommendation model only went live for logged-in users on the iOS app",
        "who actually saw the suggestions engine after launch?",
        "iOS app",
    ),
    Fact(
        "customer ids starting with 9 are employees using the staff discount, keep them out of the cohort",
        "which accounts belong to our own staff?",
        "starting with 9",
    ),
    Fact(
        "our translation vendor charges per source word at 0.11 euros, with a 50 euro minimum per job",
        "what does the localisation supplier bill us?",
        "0.11 euros",
    ),
]

SETS = {"tuning": TUNING, "held-out": HELD_OUT}
