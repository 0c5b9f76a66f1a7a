-- sysbench script: every event connects, runs one point select and disconnects (seed 003's
-- --oltp-reconnect-mode=transaction with one point select per transaction). The "queries"
-- figure of the report is then connections per second.
sysbench.cmdline.options = {
    tables = {"Number of tables (only sbtest1 is read)", 1},
    table_size = {"Rows of sbtest1", 10000},
}

function thread_init()
    drv = sysbench.sql.driver()
end

function event()
    local con = drv:connect()
    con:query(string.format("SELECT c FROM sbtest1 WHERE id=%d",
        sysbench.rand.default(1, sysbench.opt.table_size)))
    con:disconnect()
end
