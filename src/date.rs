//! Dates in UTC, without a time-zone database: today's date (suppressions' `until=`, the
//! baseline's expiry) and a moment as RFC 3339 (the reboot plan's `planned_at`). Days since
//! the epoch become a civil date by Howard Hinnant's `civil_from_days`.

/// Seconds since the epoch, now (0 if the clock is before it).
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Milliseconds since the epoch, now (0 if the clock is before it): a Lease's times, whose
/// expiry a second's rounding would move by up to a second.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Days since 1970-01-01 as (year, month, day) of the proleptic Gregorian calendar.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A day since the epoch as `YYYY-MM-DD`.
pub fn ymd(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn today_utc() -> String {
    ymd(now_secs().div_euclid(86_400))
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        ymd(days),
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Milliseconds since the epoch as a Kubernetes MicroTime, `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub fn rfc3339_micro(millis: i64) -> String {
    let t = rfc3339(millis.div_euclid(1000));
    format!(
        "{}.{:03}000Z",
        t.trim_end_matches('Z'),
        millis.rem_euclid(1000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_days_since_the_epoch() {
        assert_eq!(ymd(0), "1970-01-01");
        assert_eq!(ymd(-1), "1969-12-31");
        assert_eq!(ymd(11_016), "2000-02-29");
        assert_eq!(ymd(20_789), "2026-12-02");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_micro(1_500), "1970-01-01T00:00:01.500000Z");
        assert_eq!(rfc3339_micro(-1), "1969-12-31T23:59:59.999000Z");
    }

    /// `date -u` (coreutils) is the oracle, for today's date and for moments from 1900 to 2200.
    #[test]
    fn dates_agree_with_coreutils_date() {
        let before = today_utc();
        let out = std::process::Command::new("date")
            .args(["-u", "+%F"])
            .output()
            .unwrap();
        let date = String::from_utf8(out.stdout).unwrap();
        // Around midnight the two may straddle it.
        assert!(
            date.trim() == before || date.trim() == today_utc(),
            "{date} {before}"
        );
        let mut secs = -2_208_988_800i64; // 1900-01-01
        let mut script = String::new();
        let mut want = Vec::new();
        while secs < 7_258_118_400 {
            script.push_str(&format!("date -u -d @{secs} +%Y-%m-%dT%H:%M:%SZ\n"));
            want.push(rfc3339(secs));
            secs += 86_400 * 397 + 3_607;
        }
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(got, want);
    }
}
